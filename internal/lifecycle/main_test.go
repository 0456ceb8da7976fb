package lifecycle

import (
	"testing"
	"time"

	"github.com/holdfast-go/holdfast/internal/leaktest"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m, 5*time.Second) }
