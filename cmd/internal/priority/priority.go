// Package priority lowers a batch command's CPU priority below the
// processes it feeds.
package priority

// Batch is the nice value Lower gives a batch command (threatd import):
// its readers then take the CPU the storage writer leaves, instead of
// sharing it evenly with the writer, which is the import's bound.
const Batch = 10
