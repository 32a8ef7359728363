package faults_test

import (
	"fmt"
	"os"
)

// childEnv makes the test binary run a child role instead of the tests:
// the cross-process scenarios re-execute it.
const childEnv = "LOCKKIT_FAULTS_CHILD"

func childMain() int {
	var err error
	switch role := os.Getenv(childEnv); role {
	case "holder":
		err = holderChild()
	case "resume-look":
		err = resumeLookChild()
	default:
		err = fmt.Errorf("unknown child role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	return 0
}
