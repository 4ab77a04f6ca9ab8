pip install 'openapi-python-client>=0.29,<0.30'
openapi-python-client generate --path spec/openapi.yaml --meta none --output-path wsapi_client
npx openapi-typescript@7.13.0 spec/openapi.yaml --output api.d.ts
pip install 'openapi-generator-cli>=7.26,<7.27'   # Java 17
openapi-generator-cli generate --input-spec spec/openapi.yaml --generator-name typescript-fetch --output ts-client
