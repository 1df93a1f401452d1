"""The sync hook's pure core: read the request and the spec, decide the status, build children."""
