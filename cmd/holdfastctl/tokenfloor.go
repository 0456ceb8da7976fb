package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the ledger's database driver

	"github.com/holdfast-go/holdfast/fence"
)

// tokenFloorUsage is printed for a bad token-floor command line and -h.
const tokenFloorUsage = `usage:
  holdfastctl token-floor -sqlite FILE [-columns TABLE.COLUMN,...] [-v]

Prints the highest fencing token the fenced columns of an SQLite database
hold (0 when empty): the floor to give a cluster created anew after every
data dir was lost, so that its first token is above every token the
database accepted.

  ledger -token-floor "$(holdfastctl token-floor -sqlite ledger.db)" ...
  (or Config.Cluster.TokenFloor)

The database is opened read-only. -columns defaults to the ledger's fence
columns (shards.fence,fences.fence). -v lists each column's highest on
standard error. For another database, run SELECT MAX(column) FROM table
over every fence column, or call fence.MaxToken.
`

// runTokenFloor is the token-floor command: exit status 0, 1 (the database
// could not be read) or 2 (usage).
func runTokenFloor(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("holdfastctl token-floor", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	path := fs.String("sqlite", "", "the SQLite `file`")
	columns := fs.String("columns", "shards.fence,fences.fence", "the fence `columns`, TABLE.COLUMN comma-separated")
	verbose := fs.Bool("v", false, "list each column's highest token on standard error")
	timeout := fs.Duration("timeout", 10*time.Second, "give up after this `duration`")
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, tokenFloorUsage)
		return 0
	case err == nil && *path == "":
		err = errors.New("-sqlite is required")
	case err == nil && fs.NArg() > 0:
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err != nil {
		fmt.Fprintf(stderr, "holdfastctl token-floor: %v\n%s", err, tokenFloorUsage)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	floor, err := tokenFloor(ctx, *path, splitColumns(*columns), *verbose, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "holdfastctl token-floor: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, floor)
	return 0
}

// splitColumns splits "t.c,t2.c2" into its items.
func splitColumns(s string) []string {
	var out []string
	for _, c := range strings.Split(s, ",") {
		if c = strings.TrimSpace(c); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// tokenFloor returns the highest value of the columns in the SQLite file
// at path, opened read-only.
func tokenFloor(ctx context.Context, path string, columns []string, verbose bool, log io.Writer) (uint64, error) {
	if len(columns) == 0 {
		return 0, errors.New("-columns is empty")
	}
	if _, err := os.Stat(path); err != nil {
		return 0, err // never let the driver create an empty database
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var floor uint64
	for _, col := range columns {
		i := strings.LastIndexByte(col, '.')
		if i <= 0 {
			return 0, fmt.Errorf("-columns: %q is not TABLE.COLUMN", col)
		}
		h, err := fence.MaxToken(ctx, db, col[:i], col[i+1:])
		if err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		if verbose {
			fmt.Fprintf(log, "%s: highest token %d\n", col, h)
		}
		floor = max(floor, h)
	}
	return floor, nil
}
