package memory

import (
	"time"

	"github.com/prepkey/prepkey/backend/storetest"
)

type fakeClock = storetest.Clock

func newFakeClock() *fakeClock { return storetest.NewClock(time.UnixMilli(1_700_000_000_000)) }
