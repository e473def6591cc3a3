package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/openmax/openmax/core/config"
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
