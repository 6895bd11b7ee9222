"""Builds the hidet_nccl wheel: the package's Python files, its extension module (when given) and
the shared libraries in hidet_nccl/lib/, with the dist-info a wheel needs (METADATA, WHEEL,
RECORD).
    make_wheel.py OUT.whl VERSION PY_FILE... [--extension NAME.abi3.so] -- SO_FILE...
SO_FILE lands as its name.0. The tag is OUT.whl's (the last three parts of its name): with an
extension module it must be an abi3 one (cp310-abi3-linux_x86_64: CPython 3.10 and later, the
stable ABI the module is built on), without one py3-none-linux_x86_64 (the package is Python,
the libraries native)."""
import base64
import hashlib
import os
import sys
import zipfile


def record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def wheel_tag(out, extension):
    """The tag of OUT.whl's name, checked against what the wheel holds."""
    parts = os.path.basename(out)[:-len(".whl")].split("-")
    tag = "-".join(parts[-3:])
    python, abi, platform = parts[-3:]
    if platform != "linux_x86_64":
        sys.exit("make_wheel.py: %s: the libraries are linux_x86_64 ones, not %s" % (out, platform))
    if extension is not None and (abi != "abi3" or not python.startswith("cp3") or
                                  not extension.endswith(".abi3.so")):
        sys.exit("make_wheel.py: %s holds the stable-ABI module %s: its tag must be cpXY-abi3-linux_x86_64, not %s"
                 % (out, extension, tag))
    if extension is None and abi != "none":
        sys.exit("make_wheel.py: %s holds no extension module: its tag is py3-none-linux_x86_64, not %s" % (out, tag))
    return tag, python


def main(argv):
    out, version = argv[1], argv[2]
    sep = argv.index("--")
    py_files, so_files, extension = argv[3:sep], argv[sep + 1:], None
    if "--extension" in py_files:
        i = py_files.index("--extension")
        extension = py_files[i + 1]
        del py_files[i:i + 2]
    tag, python = wheel_tag(out, extension)
    requires = "3.%s" % python[3:] if extension is not None else "3.8"  # cp310: 3.10
    dist = "hidet_nccl-%s.dist-info" % version
    entries = []
    for path in py_files:
        entries.append(("hidet_nccl/" + os.path.basename(path), open(path, "rb").read()))
    if extension is not None:
        entries.append(("hidet_nccl/" + os.path.basename(extension), open(extension, "rb").read()))
    for path in so_files:
        entries.append(("hidet_nccl/lib/%s.0" % os.path.basename(path), open(path, "rb").read()))
    entries.append((dist + "/METADATA", ("Metadata-Version: 2.1\nName: hidet_nccl\nVersion: %s\nSummary: NCCL "
                                         "communicators and dtype-mapped collectives (over libhidet_nccl.so)\n"
                                         "Requires-Python: >=%s\n" % (version, requires)).encode()))
    entries.append((dist + "/WHEEL", ("Wheel-Version: 1.0\nGenerator: hidet-nccl make_wheel.py\nRoot-Is-Purelib: "
                                      "false\nTag: %s\n" % tag).encode()))
    record = "\n".join(record_line(n, d) for n, d in entries) + "\n%s/RECORD,,\n" % dist
    entries.append((dist + "/RECORD", record.encode()))
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))  # reproducible
            info.external_attr = (0o755 if name.endswith((".0", ".so")) else 0o644) << 16
            z.writestr(info, data, zipfile.ZIP_DEFLATED)


if __name__ == "__main__":
    main(sys.argv)
