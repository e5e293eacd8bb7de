import CBOR

/// Why an attestation object could not be parsed.
public enum AttestationObjectError: Error, Hashable, Sendable {
    /// Not valid CBOR.
    case invalidCBOR(CBORError)
    /// Not a map with text `fmt`, map `attStmt` and byte string `authData`.
    case malformed(String)
    /// The authenticator data inside is invalid.
    case invalidAuthenticatorData(AuthenticatorDataError)
}

/// The attestation object (WebAuthn §6.5): `{"fmt": …, "attStmt": …, "authData": …}`.
public struct AttestationObject: Hashable, Sendable {
    /// The attestation statement format identifier, for example `none` or `packed`.
    public var format: String
    /// The format-specific statement (a CBOR map).
    public var statement: CBORValue
    public var authenticatorData: AuthenticatorData

    public init(format: String, statement: CBORValue, authenticatorData: AuthenticatorData) {
        self.format = format
        self.statement = statement
        self.authenticatorData = authenticatorData
    }

    public var cborRepresentation: CBORValue {
        ["fmt": .text(format), "attStmt": statement, "authData": .bytes(authenticatorData.bytes)]
    }

    /// The canonical CBOR bytes, as a browser passes them to the relying party.
    public var bytes: [UInt8] { cborRepresentation.encoded() }

    /// Parses an attestation object. Pass a decoder with `requiresCanonicalForm: false` to read what
    /// authenticators that do not write canonical CBOR send (a relying party must accept those).
    public init(bytes: [UInt8], decoder: CBORDecoder = CBORDecoder()) throws(AttestationObjectError) {
        let value: CBORValue
        do {
            value = try decoder.decode(bytes)
        } catch {
            throw .invalidCBOR(error)
        }
        guard let map = value.mapValue else { throw .malformed("attestation object is not a map") }
        guard let format = map["fmt"]?.textValue else { throw .malformed("fmt is missing or not text") }
        guard let statement = map["attStmt"], statement.mapValue != nil else {
            throw .malformed("attStmt is missing or not a map")
        }
        guard let authData = map["authData"]?.bytesValue else {
            throw .malformed("authData is missing or not bytes")
        }
        do {
            self.authenticatorData = try AuthenticatorData(bytes: authData, decoder: decoder)
        } catch {
            throw .invalidAuthenticatorData(error)
        }
        self.format = format
        self.statement = statement
    }
}
