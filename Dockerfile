# The service image (API, migrations, workers) for docker-compose.yml, where a registry serves python:3.11-slim.
# The sandbox that runs students' policies is a different, much smaller image: worker/sandbox/Dockerfile.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 LANG=C.UTF-8
WORKDIR /srv/layersched
COPY pyproject.toml README.md alembic.ini ./
COPY sim/ sim/
COPY sdk/ sdk/
COPY server/ server/
COPY worker/ worker/
COPY migrations/ migrations/
COPY hidden_seeds/sample.toml hidden_seeds/README.md hidden_seeds/
# Editable, so that alembic.ini and migrations/ stay where layersched.server.admin looks for them.
RUN pip install -e '.[server]' \
 && useradd --uid 10002 --user-group --create-home layersched \
 && mkdir -p /var/lib/layersched && chown layersched:layersched /var/lib/layersched
USER layersched
EXPOSE 8000
CMD ["uvicorn", "--factory", "layersched.server.app:create_app", "--host", "0.0.0.0", "--port", "8000"]
