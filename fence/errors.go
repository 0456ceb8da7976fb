package fence

import (
	"errors"
	"fmt"
)

// ErrFenced is returned, wrapped in a *FencedError, when a write carried a
// token lower than one the resource has already accepted: the writer is a
// stale holder (a zombie) and must abort without retrying under that token.
// Test for it with errors.Is(err, ErrFenced).
var ErrFenced = errors.New("fence: token is lower than one already accepted")

// ErrNoRow is returned by the SQL helper when the key has no row to carry its
// fence, so the conditional update matched nothing for a reason other than a
// stale token. Create rows with SQL.Init (or your own INSERT with fence 0).
var ErrNoRow = errors.New("fence: no row for key")

// ErrTokenRange is returned by the SQL helper for a token above
// math.MaxInt64, which a BIGINT column cannot hold.
var ErrTokenRange = errors.New("fence: token does not fit in a signed 64-bit column")

// FencedError reports a rejected token. It matches ErrFenced with errors.Is.
type FencedError struct {
	// Resource names what was protected: the Memory resource name, or
	// "table/key" for the SQL helper.
	Resource string
	// Token is the rejected token.
	Token uint64
	// Highest is the highest token the resource had accepted when the write
	// was rejected, or 0 when it is unknown.
	Highest uint64
}

// Error describes the rejection.
func (e *FencedError) Error() string {
	if e.Highest == 0 {
		return fmt.Sprintf("fence: %s: token %d rejected: a higher token was already accepted",
			e.Resource, e.Token)
	}
	return fmt.Sprintf("fence: %s: token %d rejected: token %d was already accepted",
		e.Resource, e.Token, e.Highest)
}

// Is reports whether target is ErrFenced.
func (e *FencedError) Is(target error) bool { return target == ErrFenced }
