package core_test

import (
	"fmt"
	"os"
)

// childEnv makes the test binary run a child role instead of the tests
// (cross-process tests re-execute it).
const childEnv = "LOCKKIT_TEST_CHILD"

func childMain() int {
	var err error
	switch role := os.Getenv(childEnv); role {
	case "exclusion":
		err = exclusionChild()
	case "claim":
		err = claimChild()
	default:
		err = fmt.Errorf("unknown child role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}
