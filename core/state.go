package core

// SessionState is what a session carries across --continue besides its
// transcript: the budget's scale (the ratio of the prompt tokens the server
// last reported to the estimate of that request) and whether
// schemas_over_budget already went out, which the contract allows at most
// once per session; and, under a Backend, the id the backend keeps the
// conversation under (codex's thread id), so a continued session resumes
// it.
type SessionState struct {
	Scale         float64 `json:"scale,omitempty"`
	WarnedSchemas bool    `json:"warned_schemas,omitempty"`
	BackendThread string  `json:"backend_thread,omitempty"`
}

// State returns the session's carried state.
func (s *Session) State() SessionState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SessionState{Scale: s.scale, WarnedSchemas: s.warnedSchemas, BackendThread: s.backendThread}
}

// SetState restores st (read back from a continued session) and makes save,
// when not nil, the place every later change goes. A failed save is not
// fatal to a turn: the state is advisory, and the transcript stays the
// record. Call it before the session's first turn.
func (s *Session) SetState(st SessionState, save func(SessionState) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scale, s.warnedSchemas, s.backendThread, s.saveState = st.Scale, st.WarnedSchemas, st.BackendThread, save
}

// RequestCompaction forces a compaction at the start of the session's next
// turn (after its budget, before its first request), answered by a
// compacted receipt whatever it prunes.
func (s *Session) RequestCompaction() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forceCompact = true
}

// takeForcedCompaction reports and clears a requested compaction.
func (s *Session) takeForcedCompaction() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.forceCompact
	s.forceCompact = false
	return f
}

// stateChanged hands the state to its save function, if any. Call it
// without s.mu held.
func (s *Session) stateChanged() {
	s.mu.Lock()
	save, st := s.saveState, SessionState{Scale: s.scale, WarnedSchemas: s.warnedSchemas, BackendThread: s.backendThread}
	s.mu.Unlock()
	if save != nil {
		_ = save(st) // advisory: see SetState
	}
}
