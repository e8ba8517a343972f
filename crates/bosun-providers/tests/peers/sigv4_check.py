"""The SigV4 check the AWS stand-ins share: the Authorization header botocore
(AWS's own Python signer, independent of the Rust `aws-sigv4` crate bosun
signs with) computes for a POST, over the headers a SigV4 client must sign
(content-type, host, x-amz-date, and x-amz-security-token when a session
token is in use), at the request's own x-amz-date."""

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


def expected_authorization(handler, body, key, secret, token, service, region):
    host = handler.headers.get("host", "")
    signed = {
        "content-type": handler.headers.get("content-type", ""),
        "x-amz-date": handler.headers.get("x-amz-date", ""),
    }
    if token is not None:
        signed["x-amz-security-token"] = handler.headers.get("x-amz-security-token", "")
    request = AWSRequest(method="POST", url=f"http://{host}{handler.path}", data=body, headers=signed)
    request.context["timestamp"] = signed["x-amz-date"]
    auth = SigV4Auth(Credentials(key, secret, token), service, region)
    canonical = auth.canonical_request(request)
    signature = auth.signature(auth.string_to_sign(request, canonical), request)
    scope = auth.scope(request)
    headers = auth.signed_headers(auth.headers_to_sign(request))
    return f"AWS4-HMAC-SHA256 Credential={scope}, SignedHeaders={headers}, Signature={signature}"
