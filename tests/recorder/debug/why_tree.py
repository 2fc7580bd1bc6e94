# Role: reading the tree `tracecorn why --json` prints (and Trace.why()
# returns), shared by the tests that check it (check_why_cli.py,
# tests/recorder/python/test_why.py).


def file_offsets(node, file):
    """The offsets in `file` (a path ending) that the tree's syscall leaves name, byte by byte."""
    found = set()
    if node.get("source") == "syscall" and node.get("file", "").endswith(file) and "offset" in node:
        found.update(range(node["offset"], node["offset"] + node["size"]))
    for child in node.get("inputs", []):
        found |= file_offsets(child, file)
    return found
