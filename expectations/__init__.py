"""Great Expectations suites as code: one per format (`kafka`), built from shared checks
(`checks`), looked up by name (`registry`) and run inside the validate job (`runner`)."""
