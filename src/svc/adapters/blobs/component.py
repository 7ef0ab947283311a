"""The blob store (files under SVC_DATA_DIR, or S3) as a component: built in the serving process
too when whoever made the adapters left it out."""

from __future__ import annotations

from svc.adapters.blobs import build_blob_store
from svc.adapters.blobs.settings import BlobSettings
from svc.supervisor.component import Component

COMPONENT = Component(name="blobs", settings=BlobSettings, slot="blobs", build=build_blob_store, fill=True)
