#!/usr/bin/env python3
"""make reference-data: pack the OpenSSF malicious-packages reports of a
malicious-packages checkout (its osv/ folder) as OSV publishes them, and the
pinned sample of 300 (fetch.sh beside this file)."""
import hashlib, json, os, sys, zipfile
src, out, manifest, rev = sys.argv[1:5]
excluded = {"npm/nr-reports-core/MAL-2025-212", "npm/fca-badol/MAL-2024-2362", "npm/alloy-icons/MAL-2024-9499",
            "npm/wessycord/MAL-2024-3948", "npm/get-current-env/MAL-2024-2416"}
# osv-malicious-full: every report, one archive per ecosystem (withdrawn ones apart).
archives = {}
for kind in ("malicious", "withdrawn"):
    root = os.path.join(src, kind)
    for dirpath, _, files in os.walk(root):
        for name in sorted(files):
            if not name.endswith(".json"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)[:-len(".json")]
            if rel in excluded:
                continue
            with open(path, "rb") as f:
                body = f.read()
            eco = json.loads(body)["affected"][0]["package"]["ecosystem"]
            key = eco + ("-withdrawn" if kind == "withdrawn" else "")
            archives.setdefault(key, []).append((name, body))
full = os.path.join(out, "osv-malicious-full")
for key, entries in sorted(archives.items()):
    os.makedirs(os.path.join(full, key), exist_ok=True)
    with zipfile.ZipFile(os.path.join(full, key, "all.zip"), "w", zipfile.ZIP_DEFLATED) as z:
        for name, body in entries:
            z.writestr(name, body)
with open(os.path.join(full, "SOURCE.txt"), "w") as f:
    f.write("OpenSSF malicious-packages reports, from khulnasoft-lab/malicious-packages at %s\n" % rev)
print("osv-malicious-full: %d reports" % sum(len(e) for e in archives.values()), file=sys.stderr)
# osv-malicious-sample: the 300 listed reports, checked by their digest.
sample = os.path.join(out, "osv-malicious-sample")
with open(manifest) as f:
    rows = [line.rstrip("\n").split("\t") for line in f][1:]
for dest, original, digest, *_ in rows:
    path = os.path.join(src, "..", original)
    with open(path, "rb") as f:
        body = f.read()
    if hashlib.sha256(body).hexdigest() != digest:
        sys.exit("osv-malicious-sample: %s does not have the pinned digest" % original)
    os.makedirs(os.path.join(sample, os.path.dirname(dest)), exist_ok=True)
    with open(os.path.join(sample, dest), "wb") as f:
        f.write(body)
with open(manifest) as f, open(os.path.join(sample, "MANIFEST.tsv"), "w") as g:
    g.write(f.read())
print("osv-malicious-sample: %d reports" % len(rows), file=sys.stderr)
