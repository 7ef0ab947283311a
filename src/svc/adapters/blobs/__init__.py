"""Content-addressed artifact storage: files under SVC_DATA_DIR/blobs, or an S3-compatible store."""
