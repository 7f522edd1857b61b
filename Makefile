# Thin wrapper: every target delegates to dev.py, which needs only Python 3.
.PHONY: book test execute bench
book:
	python3 dev.py book
test:
	python3 dev.py test
execute:
	python3 dev.py execute
bench:
	python3 dev.py bench
