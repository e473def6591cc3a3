// Package layers holds the module's architecture test and nothing else:
// every production import points down the layers of the top-level folders
// (cmd and bench above replay, replay above recorder, recorder above core,
// core above provider, provider above internal), the cassette package
// stays a leaf, and a user's vcr.New compiles no engine.
package layers
