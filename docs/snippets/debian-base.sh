mmdebstrap --format=tar --variant=essential --include=python3,python3-venv,ca-certificates \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr bookworm rootfs.tar
printf 'FROM scratch\nADD rootfs.tar /\n' > Dockerfile.base
docker build -f Dockerfile.base -t mock-base . && docker build --build-arg BASE=mock-base -t workspace-api-mock .
