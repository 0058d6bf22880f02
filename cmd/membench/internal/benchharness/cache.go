package benchharness

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// ensureDataset returns the data set of cfg from <work>/datasets/<key>,
// generating it there first unless a complete one of this generator version
// is cached.
func ensureDataset(ctx context.Context, work string, cfg GenConfig, logf func(string, ...any)) (string, *Manifest, bool, error) {
	dir := filepath.Join(work, "datasets", cfg.key())
	if data, err := os.ReadFile(filepath.Join(dir, "manifest.json")); err == nil {
		var m Manifest
		if json.Unmarshal(data, &m) == nil && m.Generator == genVersion && m.Agents == cfg.Agents &&
			m.Commits == cfg.Commits && m.Seed == cfg.Seed {
			logf("data set %s: cached in %s", cfg.key(), dir)
			return dir, &m, true, nil
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", nil, false, err
	}
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return "", nil, false, err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", nil, false, err
	}
	logf("data set %s: generating (%d agents, %d history commits)", cfg.key(), cfg.Agents, cfg.Commits)
	m, err := Generate(ctx, cfg, tmp, logf)
	if err != nil {
		_ = os.RemoveAll(tmp)
		return "", nil, false, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", nil, false, err
	}
	return dir, m, false, nil
}

// cloneDataset makes a memoryd data dir from a cached data set. Packs and
// object store files are never modified in place (git and the folder store
// replace files by rename), so they are hard-linked; everything else is
// copied. File operations run 8 at a time: creating tens of thousands of
// small files is latency-bound.
func cloneDataset(src, dst string) error {
	type job struct {
		from, to string
		link     bool
	}
	jobs := make(chan job, 256)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range 8 {
		wg.Go(func() {
			for j := range jobs {
				var err error
				if j.link {
					err = os.Link(j.from, j.to)
				}
				if !j.link || err != nil {
					err = copyFile(j.from, j.to)
				}
				if err != nil {
					mu.Lock()
					first = cmp.Or(first, err)
					mu.Unlock()
				}
			}
		})
	}
	walkErr := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if rel == "manifest.json" {
			return nil
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		slash := filepath.ToSlash(rel)
		link := strings.HasPrefix(slash, repoDir+"/objects/pack/") || strings.HasPrefix(slash, objectsDir+"/data/")
		jobs <- job{from: path, to: to, link: link}
		return nil
	})
	close(jobs)
	wg.Wait()
	return cmp.Or(walkErr, first)
}

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }() // read only
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fi.Mode().Perm()|0o200)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
