"""Our app and its peers on free 127.0.0.1 ports, and a raw HTTP client for them: shared by the tests and the
benchmarks, which do not import each other (the `bench-and-tests-apart` contract in pyproject.toml).

`servers`: the app the production way (scripts/production.sh, granian) or under gunicorn, as child processes.
`loadgen`: the deploy flow over a raw keep-alive HTTP/1.1 connection, and N clients playing it.
`redis_server`: a throwaway redis-server.
Not part of the product: nothing here is packaged or imported by mrtr, moves or web.
"""
