"""Builds the hidet_nccl wheel: the package's Python files and the shared libraries in
hidet_nccl/lib/, with the dist-info a wheel needs (METADATA, WHEEL, RECORD).
    make_wheel.py OUT.whl VERSION PY_FILE... -- SO_FILE...   (SO_FILE lands as its name.0)"""
import base64
import hashlib
import os
import sys
import zipfile


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def main(argv):
    out, version = argv[1], argv[2]
    sep = argv.index("--")
    py_files, so_files = argv[3:sep], argv[sep + 1:]
    dist = "hidet_nccl-%s.dist-info" % version
    entries = []
    for path in py_files:
        entries.append(("hidet_nccl/" + os.path.basename(path), open(path, "rb").read()))
    for path in so_files:
        entries.append(("hidet_nccl/lib/%s.0" % os.path.basename(path), open(path, "rb").read()))
    entries.append((dist + "/METADATA", ("Metadata-Version: 2.1\nName: hidet_nccl\nVersion: %s\nSummary: NCCL "
                                         "communicators and dtype-mapped collectives (ctypes over libhidet_nccl.so)\n"
                                         "Requires-Python: >=3.8\n" % version).encode()))
    entries.append((dist + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: hidet-nccl make_wheel.py\nRoot-Is-Purelib: "
                                     b"false\nTag: py3-none-linux_x86_64\n"))
    record = "\n".join(record_line(n, d) for n, d in entries) + "\n%s/RECORD,,\n" % dist
    entries.append((dist + "/RECORD", record.encode()))
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))  # reproducible
            info.external_attr = (0o755 if name.endswith(".0") else 0o644) << 16
            z.writestr(info, data, zipfile.ZIP_DEFLATED)


if __name__ == "__main__":
    main(sys.argv)
