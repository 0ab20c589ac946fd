from __future__ import annotations

import vipu.client  # noqa: F401 - first, so that grpc is imported quietly (vipu/client/__init__.py)
