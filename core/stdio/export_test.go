package stdio

// MaxQueued is maxQueued, for the tests of the write queue's bound.
const MaxQueued = maxQueued
