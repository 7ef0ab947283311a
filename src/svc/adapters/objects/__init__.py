"""The projects' object store: files under SVC_DATA_DIR or an S3-compatible bucket (port.py)."""
