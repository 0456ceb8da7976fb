package coordinator

import "github.com/holdfast-go/holdfast/internal/wire"

// Names the black-box tests use that are not exported.
var ErrRejected = wire.ErrRejected
