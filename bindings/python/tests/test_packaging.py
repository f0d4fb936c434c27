"""The installed distribution's metadata: the licence travels with it."""

from __future__ import annotations

import importlib.metadata


def test_license_is_apache_2():
    meta = importlib.metadata.metadata("hilock")
    # PEP 639: the SPDX expression, and the licence text in the dist-info.
    assert meta.get("License-Expression") == "Apache-2.0", dict(meta)
    files = [str(f) for f in importlib.metadata.files("hilock") or []]
    lic = [f for f in files if f.endswith("LICENSE")]
    assert lic, files
    text = importlib.metadata.distribution("hilock").locate_file(lic[0]).read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
