package harness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/openmax/openmax/core/config"
	"github.com/openmax/openmax/core/tool/builtin"
	"github.com/openmax/openmax/core/tool/external"
)

// Approved is what ApproveSource approved: a project file and the sha256
// of the exact bytes approved.
type Approved struct {
	Project string // absolute
	Path    string // project-relative, slash-separated
	Sum     string // hex sha256
}

// ApproveSource approves, as a human at a terminal (`openmax --approve`),
// the current bytes of the file path of the project directory dir (the
// working directory when empty): an external tool's manifest or code, as
// named by an approval_request's source_path. path is relative to the
// project, or absolute inside it. A later change to the file asks again.
func ApproveSource(dir, path string, getenv func(string) string) (Approved, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if err := humanOnly(getenv); err != nil {
		return Approved{}, err
	}
	project, err := projectDir(dir)
	if err != nil {
		return Approved{}, err
	}
	rel := path
	if filepath.IsAbs(path) {
		r, err := filepath.Rel(project, path)
		if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return Approved{}, fmt.Errorf("%s is not inside the project %s", path, project)
		}
		rel = r
	}
	rel = filepath.ToSlash(filepath.Clean(filepath.FromSlash(rel)))
	if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return Approved{}, fmt.Errorf("%s is not a file inside the project %s", path, project)
	}
	sum, err := external.SumFile(project, rel)
	if err != nil {
		return Approved{}, fmt.Errorf("approve %s: %w", rel, err)
	}
	cdir, err := config.Dir(getenv)
	if err != nil {
		return Approved{}, err
	}
	s, err := config.OpenSources(cdir)
	if err != nil {
		return Approved{}, err
	}
	if err := s.Approve(project, rel, sum); err != nil {
		return Approved{}, err
	}
	return Approved{Project: project, Path: rel, Sum: sum}, nil
}

// ErrAgentSpawned refuses a human's decision (trusting a project,
// approving a tool's bytes) to an openmax that an agent's tool or hook
// started: otherwise the model could approve its own external tool, or
// trust a project, through run_command.
var ErrAgentSpawned = errors.New("refused: this openmax was started by an agent's tool or hook (" + builtin.AgentSpawnedEnv +
	" is set, or an openmax session is among its parent processes); trusting a project or approving a tool is a human's decision, made from a terminal openmax did not start")

// humanOnly is ErrAgentSpawned when the environment says an agent's
// process started this one.
func humanOnly(getenv func(string) string) error {
	if getenv(builtin.AgentSpawnedEnv) != "" {
		return ErrAgentSpawned
	}
	return nil
}
