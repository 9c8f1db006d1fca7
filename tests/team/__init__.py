"""Team vault tests: a real PostgreSQL started by the test session (tests/conftest.py, ``pg_admin_url``)."""
