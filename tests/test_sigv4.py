"""AWS Signature Version 4 against AWS's published examples: moto does not check signatures, so these
vectors are what proves rustiz's requests would be accepted by S3 itself."""
from __future__ import annotations

import hashlib

from rustiz_features.object_storage import EMPTY_SHA256, authorization, presigned_query, uri_encode

# The S3 documentation's examples ("Signature Calculations for the Authorization Header" and "Authenticating
# Requests: Using Query Parameters"): one key, one bucket, one instant.
S3_KEY = ("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
S3_HOST = "examplebucket.s3.amazonaws.com"
S3_DATE = "20130524T000000Z"
# The aws-sig-v4-test-suite's key and instant (service "service", region us-east-1).
SUITE_KEY = ("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
SUITE_DATE = "20150830T123600Z"


def s3_authorization(method: str, path: str, query: list, extra_headers: dict, payload_hash: str) -> str:
    headers = {"host": S3_HOST, "x-amz-date": S3_DATE, "x-amz-content-sha256": payload_hash, **extra_headers}
    return authorization(method, path, query, headers, payload_hash, *S3_KEY, "us-east-1", "s3", S3_DATE)


def test_the_s3_get_object_example_with_a_range_is_signed_as_aws_publishes():
    assert s3_authorization("GET", "/test.txt", [], {"range": "bytes=0-9"}, EMPTY_SHA256) == (
        "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
        "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,"
        "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41")


def test_the_s3_put_object_example_signs_its_body_and_encodes_the_dollar_in_the_key():
    body_hash = hashlib.sha256(b"Welcome to Amazon S3.").hexdigest()
    path = "/" + uri_encode("test$file.text", keep_slashes=True)
    assert path == "/test%24file.text"
    signed = s3_authorization("PUT", path, [], {"date": "Fri, 24 May 2013 00:00:00 GMT",
                                                 "x-amz-storage-class": "REDUCED_REDUNDANCY"}, body_hash)
    assert signed.endswith("SignedHeaders=date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class,"
                           "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd")


def test_the_s3_examples_with_query_parameters_sort_and_encode_them():
    lifecycle = s3_authorization("GET", "/", [("lifecycle", "")], {}, EMPTY_SHA256)
    assert lifecycle.endswith("Signature=fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f91ac7a200a0136783543")
    listing = s3_authorization("GET", "/", [("prefix", "J"), ("max-keys", "2")], {}, EMPTY_SHA256)
    assert listing.endswith("Signature=34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7")


def test_the_s3_presigned_url_example_is_signed_as_aws_publishes():
    query = presigned_query("GET", S3_HOST, "/test.txt", *S3_KEY, "us-east-1", S3_DATE, 86400)
    assert query == ("X-Amz-Algorithm=AWS4-HMAC-SHA256"
                     "&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
                     "&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host"
                     "&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404")


def test_a_presigned_url_with_a_session_token_carries_and_signs_it():
    plain = presigned_query("GET", S3_HOST, "/test.txt", *S3_KEY, "us-east-1", S3_DATE, 3600)
    with_token = presigned_query("GET", S3_HOST, "/test.txt", *S3_KEY, "us-east-1", S3_DATE, 3600, "token/+=")
    assert "&X-Amz-Security-Token=token%2F%2B%3D&" in with_token
    assert with_token.rpartition("=")[2] != plain.rpartition("=")[2]


def suite_authorization(method: str, query: list, body: bytes = b"") -> str:
    headers = {"host": "example.amazonaws.com", "x-amz-date": SUITE_DATE}
    return authorization(method, "/", query, headers, hashlib.sha256(body).hexdigest(), *SUITE_KEY,
                         "us-east-1", "service", SUITE_DATE)


def test_the_signature_test_suites_get_vanilla_is_signed_as_published():
    assert suite_authorization("GET", []) == (
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request,"
        "SignedHeaders=host;x-amz-date,"
        "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")


def test_the_signature_test_suites_post_vanilla_and_query_order_are_signed_as_published():
    assert suite_authorization("POST", []).endswith(
        "Signature=5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b")
    assert suite_authorization("GET", [("Param2", "value2"), ("Param1", "value1")]).endswith(
        "Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500")
