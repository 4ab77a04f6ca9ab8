apt-get install redis-server            # Debian/Ubuntu (brew install redis on macOS)
pip install 'workspace-api-mock[redis]'  # redis-py; included in the dev extra
python -m mockserver serve --state redis://127.0.0.1:6379/0 --workers 4
python -m mockserver serve --state redis://127.0.0.1:6379/0 --port 8081   # another process, same mock
