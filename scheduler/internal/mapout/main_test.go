package mapout

import (
	"testing"

	"github.com/jetjob/jetjob/scheduler/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }
