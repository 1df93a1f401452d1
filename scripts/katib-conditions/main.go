// Command katib-conditions decides a Katib trial's job state the way Katib's trial controller
// does (pkg/controller.v1beta1/trial/util/job_util.go, GetDeployedJobStatus, v0.17 and v0.18):
// the failure condition first, then the success condition, each a gjson path evaluated on the
// job's JSON; a match is an object or a non-empty array, whose first element gives reason and
// message.
//
// Usage: katib-conditions SUCCESS_CONDITION FAILURE_CONDITION < jobs.json
// where jobs.json is {"name": <job object>, ...}; it prints
// {"name": {"condition": "Succeeded|Failed|Running", "reason": ..., "message": ...}, ...}.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/tidwall/gjson"
)

// TrialJobStatus is Katib's: what it reads from the matched condition.
type TrialJobStatus struct {
	Condition string `json:"condition"`
	Reason    string `json:"reason,omitempty"`
	Message   string `json:"message,omitempty"`
}

// matched is Katib's test for a condition that holds: an object, or a non-empty array.
func matched(result gjson.Result) (string, bool) {
	if result.IsObject() {
		return result.String(), true
	}
	if result.IsArray() && len(result.Array()) > 0 {
		return result.Array()[0].String(), true
	}
	return "", false
}

func decide(job string, success string, failure string) (TrialJobStatus, error) {
	for _, check := range []struct{ path, condition string }{
		{failure, "Failed"}, {success, "Succeeded"},
	} {
		if found, ok := matched(gjson.Get(job, check.path)); ok {
			status := TrialJobStatus{}
			if err := json.Unmarshal([]byte(found), &status); err != nil {
				return status, fmt.Errorf("unmarshal %s condition: %v", check.condition, err)
			}
			status.Condition = check.condition
			return status, nil
		}
	}
	return TrialJobStatus{Condition: "Running"}, nil
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: katib-conditions SUCCESS_CONDITION FAILURE_CONDITION < jobs.json")
		os.Exit(2)
	}
	var jobs map[string]json.RawMessage
	if err := json.NewDecoder(os.Stdin).Decode(&jobs); err != nil {
		fmt.Fprintln(os.Stderr, "reading jobs:", err)
		os.Exit(2)
	}
	out := map[string]TrialJobStatus{}
	for name, job := range jobs {
		status, err := decide(string(job), os.Args[1], os.Args[2])
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			os.Exit(1)
		}
		out[name] = status
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
