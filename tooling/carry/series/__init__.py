"""The series on disk: manifest, patch files, trailers, versions and locks. Imports
base and git only."""
