package experiments

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function (not in a test file) may be, from
// its func keyword to its closing brace.
const maxFuncLines = 100

// longFuncs are the functions allowed to be longer than maxFuncLines, by
// package folder and name (Type.Method for methods), each with the reason.
// Numeric kernels stay whole: their loops share buffers and accumulators,
// and their order of operations fixes the bits of every result.
var longFuncs = map[string]string{
	"models/internal/gemm buffers.run": "GEMM blocking loop: packing and micro-kernel tiles",
}

// TestFuncLength fails on every function of the repository's Go code (tests
// aside) longer than maxFuncLines that longFuncs does not allow, and on
// every entry of longFuncs that is no longer needed.
func TestFuncLength(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	fset := token.NewFileSet()
	seen := map[string]bool{}
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == ".git" || rel == "results" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			lines := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if lines <= maxFuncLines {
				continue
			}
			key := filepath.ToSlash(filepath.Dir(rel)) + " " + funcName(fd)
			if _, ok := longFuncs[key]; ok {
				seen[key] = true
				continue
			}
			t.Errorf("%s:%d: %s is %d lines (at most %d): split it into named steps, or, for a numeric kernel, add it to longFuncs with the reason",
				rel, fset.Position(fd.Pos()).Line, funcName(fd), lines, maxFuncLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("parsed only %d Go files under %s", files, root)
	}
	for key := range longFuncs {
		if !seen[key] {
			t.Errorf("longFuncs allows %q, which is gone or at most %d lines now: remove it from longFuncs", key, maxFuncLines)
		}
	}
}

// funcName is fd's name, Type.Method for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
			continue
		case *ast.IndexExpr:
			typ = x.X
			continue
		case *ast.IndexListExpr:
			typ = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}
