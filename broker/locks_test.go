package broker

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lockLine is a line of doc.go's lock list: "\tType.field (spelling, ...)".
var lockLine = regexp.MustCompile(`^\t(\S+) \(([^)]+)\)`)

// documentedLocks reads the lock list of doc.go's "# Locks" section: each
// lock's name (Type.field, package-qualified for a subpackage) and the
// spellings a …Locked doc may use for it.
func documentedLocks(t *testing.T) (names []string, spellings map[string][]string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	require.NoError(t, err)
	text := f.Doc.Text()
	i := strings.Index(text, "# Locks\n")
	require.GreaterOrEqual(t, i, 0, "doc.go has a # Locks section")
	section := text[i+len("# Locks\n"):]
	if j := strings.Index(section, "\n# "); j >= 0 {
		section = section[:j]
	}
	spellings = map[string][]string{}
	for _, line := range strings.Split(section, "\n") {
		m := lockLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		names = append(names, m[1])
		for _, s := range strings.Split(m[2], ",") {
			spellings[m[1]] = append(spellings[m[1]], strings.TrimSpace(s))
		}
	}
	return names, spellings
}

// lockPackages are the directories whose mutexes and …Locked functions the
// lock list covers, with the qualifier their names carry in it.
var lockPackages = map[string]string{".": "", "ready": "ready.", "wake": "wake."}

func parseLockPackage(t *testing.T, dir string) ([]*ast.File, *token.FileSet) {
	t.Helper()
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	var files []*ast.File
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		require.NoError(t, err)
		files = append(files, f)
	}
	return files, fset
}

// declaredMutexes returns every struct field of type sync.Mutex or
// sync.RWMutex in files, as Type.field.
func declaredMutexes(files []*ast.File, qual string) []string {
	var out []string
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, fld := range st.Fields.List {
				sel, ok := fld.Type.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "Mutex" && sel.Sel.Name != "RWMutex" {
					continue
				}
				if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "sync" {
					continue
				}
				for _, name := range fld.Names {
					out = append(out, qual+ts.Name.Name+"."+name.Name)
				}
			}
			return true
		})
	}
	return out
}

// TestLockOrderListsEveryMutex: issue 26, "the lock order in doc.go lists
// every mutex".
func TestLockOrderListsEveryMutex(t *testing.T) {
	names, _ := documentedLocks(t)
	var declared []string
	for dir, qual := range lockPackages {
		files, _ := parseLockPackage(t, dir)
		declared = append(declared, declaredMutexes(files, qual)...)
	}
	sort.Strings(declared)
	listed := append([]string(nil), names...)
	sort.Strings(listed)
	assert.Equal(t, declared, listed, "doc.go's # Locks lists each sync.Mutex and sync.RWMutex field once (add a new one where it sits in the order; drop one that is gone)")
}

// TestLockedDocsNameTheirLock: issue 26, "every …Locked doc names its lock"
// (style.md: a method that expects a lock held ends in Locked).
func TestLockedDocsNameTheirLock(t *testing.T) {
	_, spellings := documentedLocks(t)
	var pats []*regexp.Regexp
	for _, ss := range spellings {
		for _, s := range ss {
			pats = append(pats, regexp.MustCompile(`(^|[^\w.])`+regexp.QuoteMeta(s)+`\b`))
		}
	}
	n := 0
	for dir := range lockPackages {
		files, fset := parseLockPackage(t, dir)
		for _, f := range files {
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || !strings.HasSuffix(fd.Name.Name, "Locked") {
					continue
				}
				n++
				doc := fd.Doc.Text()
				named := false
				for _, p := range pats {
					if p.MatchString(doc) {
						named = true
						break
					}
				}
				assert.True(t, named, "%s: %s's doc names no lock of doc.go's # Locks (say which one the caller holds)", fset.Position(fd.Pos()), fd.Name.Name)
			}
		}
	}
	assert.Greater(t, n, 30, "the broker's …Locked functions were found")
}
