#!/usr/bin/env bash
# make reference-data: fetch the reference data some tests check threatd
# against from its pinned public sources into DIR (default .reference/),
# where the network allows. Needs curl, tar and python3.
#
#   stix2-json-schemas/   oasis-open/cti-stix2-json-schemas at STIX_REV, schemas/ only
#   osv-schema/           ossf/osv-schema at OSV_REV, validation/schema.json
#   osv-malicious-full/   OpenSSF malicious-packages reports as OSV publishes them,
#                         <Ecosystem>/all.zip and <Ecosystem>-withdrawn/all.zip
#   osv-malicious-sample/ the 300 reports listed in osv-malicious-sample.tsv
#                         (beside this script), checked by their sha256
#
# The malicious-packages reports come from the re-host
# khulnasoft-lab/malicious-packages at MAL_REV (the upstream repository is too
# large to fetch whole); 5 files that still carry the re-host's rebranding are
# left out, as in the data set the tests were written against.
set -euo pipefail
dir=${1:-.reference}
stix_rev=${2:?STIX schemas revision}
osv_rev=${3:?OSV schema revision}
mal_rev=${MAL_REV:-5b9d30f8de8c10b44ed7a59e097a99e6915d5ade}
here=$(cd "$(dirname "$0")" && pwd)

for tool in curl tar python3; do
  command -v "$tool" >/dev/null || { echo "make reference-data needs $tool (apt-get install $tool)" >&2; exit 1; }
done
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fetch() { # URL FILE
  echo "fetching $1" >&2
  curl -fsSL --retry 3 -o "$2" "$1" || {
    echo "could not fetch $1: this network does not reach it. Copy the reference data from a machine that has it, or set THREATD_REFERENCE_DIR" >&2
    exit 1
  }
}

if [ ! -d "$dir/stix2-json-schemas" ]; then
  fetch "https://codeload.github.com/oasis-open/cti-stix2-json-schemas/tar.gz/$stix_rev" "$tmp/stix.tgz"
  mkdir -p "$tmp/stix" && tar -xzf "$tmp/stix.tgz" -C "$tmp/stix" --strip-components=1
  cp -r "$tmp/stix/schemas" "$dir/stix2-json-schemas"
  printf 'Repository: https://github.com/oasis-open/cti-stix2-json-schemas\nCommit: %s\n' "$stix_rev" >"$dir/stix2-json-schemas/SOURCE.txt"
fi

if [ ! -d "$dir/osv-schema" ]; then
  fetch "https://raw.githubusercontent.com/ossf/osv-schema/$osv_rev/validation/schema.json" "$tmp/schema.json"
  mkdir -p "$dir/osv-schema" && cp "$tmp/schema.json" "$dir/osv-schema/schema.json"
  printf 'Repository: https://github.com/ossf/osv-schema\nCommit: %s\nFile: validation/schema.json\n' "$osv_rev" >"$dir/osv-schema/SOURCE.txt"
fi

if [ ! -d "$dir/osv-malicious-full" ] || [ ! -d "$dir/osv-malicious-sample" ]; then
  fetch "https://codeload.github.com/khulnasoft-lab/malicious-packages/tar.gz/$mal_rev" "$tmp/mal.tgz"
  mkdir -p "$tmp/mal" && tar -xzf "$tmp/mal.tgz" -C "$tmp/mal" --strip-components=1 --wildcards '*/osv/*'
  python3 "$here/pack.py" "$tmp/mal/osv" "$dir" "$here/osv-malicious-sample.tsv" "$mal_rev"
fi
echo "reference data in $dir" >&2
