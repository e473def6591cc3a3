// Package vendors registers every built-in vendor wire with the registry
// (provider/codec), as a program imports a database/sql driver:
//
//	import _ "github.com/openmax/openmax/provider/vendors"
//
// The fake provider, the replay transport, the cassette tools, the
// importer and the harness import it, so each of them knows every
// built-in wire; a program that wants fewer imports the vendor packages
// it needs instead. Adding a vendor is one line here (see ARCHITECTURE.md,
// "How to add a vendor").
package vendors

import (
	_ "github.com/openmax/openmax/provider/anthropic"        // Messages
	_ "github.com/openmax/openmax/provider/bedrock"          // ConverseStream, InvokeModelWithResponseStream
	_ "github.com/openmax/openmax/provider/gemini"           // the Gemini API and Vertex AI
	_ "github.com/openmax/openmax/provider/openai"           // Chat Completions
	_ "github.com/openmax/openmax/provider/openai/responses" // the Responses API
)
