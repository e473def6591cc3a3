package gemini

import "strings"

// Thought signatures ride on provider parts. The wire puts a signature on
// the part it belongs to (a thought, a text or a function call part), and
// the next request must carry it back on that same part. The engine keeps
// signatures only as provider.Thinking blocks (a ThinkingDelta with a
// Signature closes the block), so a signature's string says where it came
// from:
//
//	a signature as it came    a thought part's own: it goes back on the
//	                          thought part holding the block's text
//	"gemini:text:" + sig      a text part's: it goes back on the text part
//	                          (an empty one when the reply had no text)
//	"gemini:call:" + id + ":" + sig
//	                          the function call's with that id: it goes
//	                          back on that call's part
//
// A block's text is the thought text that streamed before its signature,
// so reasoning, then a call carrying a signature (A13) is one block: the
// thought part goes back unsigned, and the signature on the call. The
// wire's signatures are base64, which has no ':', so the id of a call is
// everything between the prefix and the last ':'.

const (
	textSigPrefix = "gemini:text:"
	callSigPrefix = "gemini:call:"
)

// Where a signature belongs.
const (
	SiteThought = "thought"
	SiteText    = "text"
	SiteCall    = "call"
)

// TextSignature is the provider form of a text part's signature.
func TextSignature(sig string) string { return textSigPrefix + sig }

// CallSignature is the provider form of the signature of the function
// call with the given id.
func CallSignature(callID, sig string) string { return callSigPrefix + callID + ":" + sig }

// SignatureSite reads a provider signature of this wire: the kind of part
// it belongs to (SiteThought, SiteText, SiteCall), the call's id for
// SiteCall, and the signature as the wire carries it.
func SignatureSite(s string) (site, callID, sig string) {
	switch {
	case strings.HasPrefix(s, textSigPrefix):
		return SiteText, "", strings.TrimPrefix(s, textSigPrefix)
	case strings.HasPrefix(s, callSigPrefix):
		rest := strings.TrimPrefix(s, callSigPrefix)
		if i := strings.LastIndexByte(rest, ':'); i >= 0 {
			return SiteCall, rest[:i], rest[i+1:]
		}
		return SiteCall, "", rest
	}
	return SiteThought, "", s
}
