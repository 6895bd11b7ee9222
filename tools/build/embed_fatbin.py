#!/usr/bin/env python3
"""Writes a fatbin as a C array for the archive to carry (core/BUILD's own_fatbin rule):

    embed_fatbin.py FATBIN SYMBOL OUT.c

OUT.c defines `const unsigned char SYMBOL[]` (64-byte aligned, as cuModuleLoadData wants an
image) and `const size_t SYMBOL_size`."""
import sys


def main(argv):
    if len(argv) != 4:
        sys.exit("usage: embed_fatbin.py FATBIN SYMBOL OUT.c")
    data = open(argv[1], "rb").read()
    if not data:
        sys.exit(f"embed_fatbin.py: {argv[1]} is empty")
    sym = argv[2]
    rows = (",".join(str(b) for b in data[i:i + 32]) for i in range(0, len(data), 32))
    with open(argv[3], "w") as out:
        out.write(f"/* Generated from {argv[1]} by tools/build/embed_fatbin.py: do not edit. */\n")
        out.write("#include <stddef.h>\n\n")
        out.write(f"extern const unsigned char {sym}[];\nextern const size_t {sym}_size;\n")
        out.write(f"__attribute__((aligned(64))) const unsigned char {sym}[] = {{\n")
        out.write(",\n".join(rows))
        out.write(f"}};\nconst size_t {sym}_size = {len(data)};\n")


if __name__ == "__main__":
    main(sys.argv)
