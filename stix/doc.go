// Package stix will hold threatd's STIX 2.1 objects, the mapping from
// verified threat records to bundles, and the built-in exporters
// (CONTRACT.md §7, /query-latest-stix and /anomali-feed). It is empty until
// the exporter issue; the directory exists because the layout is fixed.
package stix
