package exposure

// NewDetectorQueue is NewDetector with a queue of n reports.
var NewDetectorQueue = newDetector
