"""A stand-in for AWS STS (the query protocol) that checks every
AssumeRole request's SigV4 signature with botocore (AWS's own Python
signer, independent of the Rust `aws-sigv4` crate bosun signs with) and
answers in the XML shapes of the STS API reference.

    python sts_server.py CONFIG_JSON

CONFIG_JSON:

    {"region": "us-east-1",
     "keys": {"AKIA...": ["secret", null or "session token"]},
     "roles": {"arn:aws:iam::123456789012:role/a":
                 {"issue": ["ASIA...", "secret", "token"],   # optional
                  "expires_in": 3600,                         # optional
                  "throttle": 1}},                            # optional
     "web_identity_tokens": ["token-1", ...]}

Prints `PORT <n>` once listening. For each POST to `/`:

- AssumeRole: the signature is recomputed (service `sts`, the configured
  region, at the request's own x-amz-date) with the secret of the access
  key the Authorization header names, over the headers a SigV4 client must
  sign (content-type, host, x-amz-date, and x-amz-security-token when the
  key has a session token); a key it does not know is 403
  `InvalidClientTokenId`, a different signature 403
  `SignatureDoesNotMatch`.
- AssumeRoleWithWebIdentity: unsigned; the WebIdentityToken must be one of
  `web_identity_tokens`, else 400 `InvalidIdentityToken`.

A role not in `roles` is 403 `AccessDenied`; a role's first `throttle`
requests are 400 `Throttling`. Otherwise the role's keys (`issue`, else
fresh ones) are answered, expiring `expires_in` seconds from now, and
become keys the server knows (so they can sign the next link of a chain).
GET /requests answers what was asked: each request's action, form
parameters, the access key that signed it (or null), whether it carried
an Authorization header, and the status answered.
"""

import datetime
import json
import sys
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Lock

import sigv4_check

config = json.loads(sys.argv[1])
region = config.get("region", "us-east-1")
keys = {k: (v[0], v[1]) for k, v in config.get("keys", {}).items()}
roles = config.get("roles", {})
web_tokens = set(config.get("web_identity_tokens", []))
throttled = {arn: 0 for arn in roles}
requests = []
issued = [0]
lock = Lock()
NS = "https://sts.amazonaws.com/doc/2011-06-15/"


def error_xml(kind, code, message):
    return (
        f'<ErrorResponse xmlns="{NS}">\n'
        f"  <Error>\n    <Type>{kind}</Type>\n    <Code>{code}</Code>\n"
        f"    <Message>{escape(message)}</Message>\n  </Error>\n"
        f"  <RequestId>4e0b2ab0-1c6d-4f84-9a0e-0c5d5b3e1e6e</RequestId>\n"
        f"</ErrorResponse>\n"
    )


def escape(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def credentials_xml(key, secret, token, expires_in):
    expiration = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=expires_in)
    return (
        f"    <Credentials>\n"
        f"      <AccessKeyId>{key}</AccessKeyId>\n"
        f"      <SecretAccessKey>{escape(secret)}</SecretAccessKey>\n"
        f"      <SessionToken>{escape(token)}</SessionToken>\n"
        f"      <Expiration>{expiration.strftime('%Y-%m-%dT%H:%M:%SZ')}</Expiration>\n"
        f"    </Credentials>\n"
    )


def assume_role_xml(arn, session, creds):
    role_name = arn.rsplit("/", 1)[-1]
    return (
        f'<AssumeRoleResponse xmlns="{NS}">\n'
        f"  <AssumeRoleResult>\n"
        f"    <AssumedRoleUser>\n"
        f"      <Arn>arn:aws:sts::123456789012:assumed-role/{role_name}/{escape(session)}</Arn>\n"
        f"      <AssumedRoleId>ARO123EXAMPLE123:{escape(session)}</AssumedRoleId>\n"
        f"    </AssumedRoleUser>\n"
        f"{creds}"
        f"    <PackedPolicySize>6</PackedPolicySize>\n"
        f"  </AssumeRoleResult>\n"
        f"  <ResponseMetadata>\n    <RequestId>c6104cbe-af31-11e0-8154-cbc7ccf896c7</RequestId>\n  </ResponseMetadata>\n"
        f"</AssumeRoleResponse>\n"
    )


def web_identity_xml(arn, session, creds):
    role_name = arn.rsplit("/", 1)[-1]
    return (
        f'<AssumeRoleWithWebIdentityResponse xmlns="{NS}">\n'
        f"  <AssumeRoleWithWebIdentityResult>\n"
        f"    <SubjectFromWebIdentityToken>system:serviceaccount:default:bosun</SubjectFromWebIdentityToken>\n"
        f"    <Audience>sts.amazonaws.com</Audience>\n"
        f"    <AssumedRoleUser>\n"
        f"      <Arn>arn:aws:sts::123456789012:assumed-role/{role_name}/{escape(session)}</Arn>\n"
        f"      <AssumedRoleId>AROACLKWSDQRAOEXAMPLE:{escape(session)}</AssumedRoleId>\n"
        f"    </AssumedRoleUser>\n"
        f"{creds}"
        f"    <Provider>arn:aws:iam::123456789012:oidc-provider/oidc.eks.us-east-1.amazonaws.com/id/EXAMPLE</Provider>\n"
        f"  </AssumeRoleWithWebIdentityResult>\n"
        f"  <ResponseMetadata>\n    <RequestId>ad4156e9-bce1-11e2-82e6-6b6efEXAMPLE</RequestId>\n  </ResponseMetadata>\n"
        f"</AssumeRoleWithWebIdentityResponse>\n"
    )


def expected_authorization(handler, body, key, secret, token):
    return sigv4_check.expected_authorization(handler, body, key, secret, token, "sts", region)


def signing_key(authorization):
    """The access key id of `Credential=KEY/date/region/service/aws4_request`."""
    for part in authorization.split(" "):
        part = part.strip(",")
        if part.startswith("Credential="):
            return part[len("Credential="):].split("/", 1)[0]
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body, content_type="text/xml"):
        data = body.encode()
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        with lock:
            self.send(200, json.dumps(requests), "application/json")

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        params = dict(urllib.parse.parse_qsl(body.decode(), keep_blank_values=True))
        authorization = self.headers.get("authorization")
        record = {
            "action": params.get("Action"),
            "params": params,
            "key": signing_key(authorization) if authorization else None,
            "signed": authorization is not None,
            "content_type": self.headers.get("content-type"),
        }
        with lock:
            status, answer = self.answer(params, body, authorization)
            record["status"] = status
            requests.append(record)
        self.send(status, answer)

    def answer(self, params, body, authorization):
        action = params.get("Action")
        if params.get("Version") != "2011-06-15" or action not in ("AssumeRole", "AssumeRoleWithWebIdentity"):
            return 400, error_xml("Sender", "InvalidAction", f"Could not find operation {action} for version {params.get('Version')}")
        if not (self.headers.get("content-type") or "").startswith("application/x-www-form-urlencoded"):
            return 400, error_xml("Sender", "InvalidParameterValue", "not a form")
        if action == "AssumeRole":
            key = signing_key(authorization or "")
            if key not in keys:
                return 403, error_xml("Sender", "InvalidClientTokenId", "The security token included in the request is invalid.")
            secret, token = keys[key]
            expected = expected_authorization(self, body, key, secret, token)
            if authorization != expected:
                return 403, error_xml(
                    "Sender",
                    "SignatureDoesNotMatch",
                    "The request signature we calculated does not match the signature you provided. "
                    "Check your AWS Secret Access Key and signing method. Consult the service documentation for details.",
                )
            caller = f"arn:aws:iam::123456789012:user/{key}"
        else:
            if params.get("WebIdentityToken") not in web_tokens:
                return 400, error_xml("Sender", "InvalidIdentityToken", "The web identity token that was passed could not be validated by AWS.")
            caller = "a web identity"
        arn = params.get("RoleArn", "")
        role = roles.get(arn)
        if role is None:
            return 403, error_xml("Sender", "AccessDenied", f"User: {caller} is not authorized to perform: sts:{action} on resource: {arn}")
        if throttled[arn] < role.get("throttle", 0):
            throttled[arn] += 1
            return 400, error_xml("Sender", "Throttling", "Rate exceeded")
        if "issue" in role:
            key, secret, token = role["issue"]
        else:
            issued[0] += 1
            n = issued[0]
            key, secret, token = f"ASIA{n:016d}", f"issued-secret-{n}", f"issued-token-{n}"
        keys[key] = (secret, token)
        creds = credentials_xml(key, secret, token, role.get("expires_in", 3600))
        session = params.get("RoleSessionName", "")
        if action == "AssumeRole":
            return 200, assume_role_xml(arn, session, creds)
        return 200, web_identity_xml(arn, session, creds)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"PORT {server.server_address[1]}", flush=True)
server.serve_forever()
