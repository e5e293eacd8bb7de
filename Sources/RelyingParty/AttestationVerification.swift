import CBOR
import Crypto
import WebAuthn

/// What a verified attestation statement established.
struct VerifiedAttestation {
    var type: AttestationType
    var trustPath: [[UInt8]]
}

/// Attestation statement verification procedures (WebAuthn §8): `none` and `packed` (self and x5c).
enum AttestationVerification {
    static func verify(
        _ object: AttestationObject, clientDataHash: [UInt8], credential: AttestedCredentialData
    ) throws(RelyingPartyError) -> VerifiedAttestation {
        switch object.format {
        case "none":
            guard object.statement.mapValue?.isEmpty == true else {
                throw RelyingPartyError(.attestationInvalid, "a none attestation statement must be an empty map")
            }
            return VerifiedAttestation(type: .none, trustPath: [])
        case "packed":
            return try verifyPacked(
                object.statement, signedData: object.authenticatorData.bytes + clientDataHash, credential: credential)
        default:
            throw RelyingPartyError(
                .unsupportedAttestationFormat, "attestation format \"\(object.format)\" is not supported")
        }
    }

    /// WebAuthn §8.2: `{alg, sig}` for self attestation, `{alg, sig, x5c}` for basic / AttCA.
    private static func verifyPacked(
        _ statement: CBORValue, signedData: [UInt8], credential: AttestedCredentialData
    ) throws(RelyingPartyError) -> VerifiedAttestation {
        let map = statement.mapValue ?? [:]
        guard let alg = map["alg"]?.intValue else {
            throw RelyingPartyError(.attestationInvalid, "packed attStmt has no integer alg")
        }
        guard let signatureBytes = map["sig"]?.bytesValue else {
            throw RelyingPartyError(.attestationInvalid, "packed attStmt has no byte-string sig")
        }
        if map["ecdaaKeyId"] != nil {
            throw RelyingPartyError(.attestationInvalid, "packed ECDAA attestation is not supported")
        }

        guard let x5cValue = map["x5c"] else {
            // Self attestation: alg must be the credential key's, and the key signs.
            let keyAlgorithm = credential.publicKey.algorithm.rawValue
            guard alg == keyAlgorithm else {
                throw RelyingPartyError(
                    .attestationInvalid, "self attestation alg \(alg) differs from the credential key's \(keyAlgorithm)"
                )
            }
            guard credential.publicKey.isValidSignature(signatureBytes, for: signedData) else {
                throw RelyingPartyError(.attestationInvalid, "self attestation signature does not verify")
            }
            return VerifiedAttestation(type: .self, trustPath: [])
        }

        guard let elements = x5cValue.arrayValue, !elements.isEmpty else {
            throw RelyingPartyError(.attestationInvalid, "packed x5c is not a non-empty array")
        }
        var chain: [[UInt8]] = []
        for element in elements {
            guard let der = element.bytesValue else {
                throw RelyingPartyError(.attestationInvalid, "packed x5c holds a \(element.typeName), not bytes")
            }
            chain.append(der)
        }
        guard alg == COSEAlgorithm.es256.rawValue else {
            throw RelyingPartyError(
                .unsupportedAlgorithm, "packed attestation alg \(alg) is not supported (ES256 only)")
        }
        guard let leaf = AttestationCertificate(der: chain[0]) else {
            throw RelyingPartyError(.attestationInvalid, "the x5c leaf is not a readable X.509 certificate")
        }
        try checkPackedCertificateRequirements(leaf, aaguid: credential.aaguid)
        guard let key = leaf.publicKey else {
            throw RelyingPartyError(.attestationInvalid, "the attestation certificate's key is not EC P-256")
        }
        guard verifyES256(signatureBytes, over: signedData, with: key) else {
            throw RelyingPartyError(.attestationInvalid, "packed attestation signature does not verify")
        }
        return VerifiedAttestation(type: .basicOrAttCA, trustPath: chain)
    }

    /// WebAuthn §8.2.1, "Certificate Requirements for Packed Attestation Statements".
    private static func checkPackedCertificateRequirements(
        _ certificate: AttestationCertificate, aaguid: AAGUID
    ) throws(RelyingPartyError) {
        guard certificate.version == 3 else {
            throw RelyingPartyError(
                .attestationInvalid, "attestation certificate is version \(certificate.version), not 3")
        }
        for (oid, name) in [
            (AttestationCertificate.countryName, "C"), (AttestationCertificate.organizationName, "O"),
            (AttestationCertificate.commonName, "CN"),
        ] where certificate.subjectValues(oid).isEmpty {
            throw RelyingPartyError(.attestationInvalid, "attestation certificate subject has no \(name)")
        }
        guard certificate.subjectValues(AttestationCertificate.organizationalUnitName) == ["Authenticator Attestation"]
        else {
            throw RelyingPartyError(
                .attestationInvalid, "attestation certificate subject OU is not \"Authenticator Attestation\"")
        }
        guard let isCA = certificate.basicConstraintsCA else {
            throw RelyingPartyError(.attestationInvalid, "attestation certificate has no Basic Constraints")
        }
        guard !isCA else {
            throw RelyingPartyError(.attestationInvalid, "attestation certificate is a CA certificate")
        }
        if let (critical, value) = certificate.aaguidExtension {
            guard !critical else {
                throw RelyingPartyError(.attestationInvalid, "the AAGUID extension must not be critical")
            }
            guard let value else {
                throw RelyingPartyError(.attestationInvalid, "the AAGUID extension is not a 16-byte OCTET STRING")
            }
            guard value == aaguid.bytes else {
                throw RelyingPartyError(
                    .attestationInvalid,
                    "certificate AAGUID \(AAGUID(bytes: value)!) differs from authenticator data's \(aaguid)")
            }
        }
    }

    /// Verifies a DER ECDSA P-256 / SHA-256 signature; false for bad encodings too.
    static func verifyES256(_ signature: [UInt8], over data: [UInt8], with key: P256.Signing.PublicKey) -> Bool {
        guard let parsed = try? P256.Signing.ECDSASignature(derRepresentation: signature) else { return false }
        return key.isValidSignature(parsed, for: data)
    }
}
