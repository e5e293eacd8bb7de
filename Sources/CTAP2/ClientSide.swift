import CBOR
import WebAuthn

/// The platform side of CTAP2: builds requests and reads responses, as a browser does before it
/// hands the result to a relying party. Used by the demo and by the hybrid client role.
public enum CTAPClient {
    /// An authenticatorMakeCredential message (command byte and CBOR) for ES256.
    public static func makeCredentialMessage(
        clientDataHash: [UInt8],
        relyingPartyID: String,
        relyingPartyName: String?,
        userHandle: [UInt8],
        userName: String,
        userDisplayName: String?,
        excludeList: [[UInt8]] = [],
        discoverable: Bool = true,
        userVerification: Bool = true
    ) -> [UInt8] {
        var rp: [CBORValue: CBORValue] = ["id": .text(relyingPartyID)]
        if let relyingPartyName { rp["name"] = .text(relyingPartyName) }
        var user: [CBORValue: CBORValue] = ["id": .bytes(userHandle), "name": .text(userName)]
        if let userDisplayName { user["displayName"] = .text(userDisplayName) }
        var parameters: [CBORValue: CBORValue] = [
            1: .bytes(clientDataHash),
            2: .map(rp),
            3: .map(user),
            4: [["alg": .int(COSEAlgorithm.es256.rawValue), "type": "public-key"]],
        ]
        if !excludeList.isEmpty {
            parameters[5] = .array(excludeList.map { CredentialDescriptor(id: $0).cborRepresentation })
        }
        var options: [CBORValue: CBORValue] = [:]
        if discoverable { options["rk"] = true }
        if userVerification { options["uv"] = true }
        if !options.isEmpty { parameters[7] = .map(options) }
        return [CTAPCommand.makeCredential.rawValue] + CBORValue.map(parameters).encoded()
    }

    /// An authenticatorGetAssertion message (command byte and CBOR).
    public static func getAssertionMessage(
        relyingPartyID: String,
        clientDataHash: [UInt8],
        allowList: [[UInt8]] = [],
        userPresence: Bool = true,
        userVerification: Bool = true
    ) -> [UInt8] {
        var parameters: [CBORValue: CBORValue] = [1: .text(relyingPartyID), 2: .bytes(clientDataHash)]
        if !allowList.isEmpty {
            parameters[3] = .array(allowList.map { CredentialDescriptor(id: $0).cborRepresentation })
        }
        var options: [CBORValue: CBORValue] = [:]
        if !userPresence { options["up"] = false }
        if userVerification { options["uv"] = true }
        if !options.isEmpty { parameters[5] = .map(options) }
        return [CTAPCommand.getAssertion.rawValue] + CBORValue.map(parameters).encoded()
    }

    /// Splits a response into its status and decoded body; a non-zero status is thrown.
    static func body(of response: [UInt8]) throws(CTAPError) -> CBORValue {
        guard let status = response.first else { throw .invalidLength }
        guard status == 0 else { throw CTAPError(rawValue: status) }
        do {
            return try CBORValue(decoding: response.dropFirst())
        } catch {
            throw CTAPError(error)
        }
    }
}

/// A makeCredential response turned into the WebAuthn attestation object.
public struct MakeCredentialResponse: Sendable {
    public var attestationObject: AttestationObject

    /// Reads the authenticator's response (status byte and CBOR); an error status is thrown.
    public init(ctapResponse: [UInt8]) throws(CTAPError) {
        let map = try CTAPClient.body(of: ctapResponse).parameters()
        let format = try map.required(1).text()
        let authenticatorData = try map.required(2).bytes()
        let statement = try map.required(3)
        guard statement.mapValue != nil else { throw .cborUnexpectedType }
        do {
            attestationObject = AttestationObject(
                format: format, statement: statement, authenticatorData: try AuthenticatorData(bytes: authenticatorData)
            )
        } catch {
            throw .invalidCBOR
        }
    }

    /// The new credential's ID.
    public var credentialID: [UInt8] { attestationObject.authenticatorData.attestedCredentialData?.credentialID ?? [] }
}

/// One getAssertion or getNextAssertion response.
public struct GetAssertionResponse: Sendable {
    public var credentialID: [UInt8]
    public var authenticatorData: [UInt8]
    public var signature: [UInt8]
    public var userHandle: [UInt8]?
    public var userName: String?
    public var userDisplayName: String?
    /// Present on the first response when more assertions can be fetched with getNextAssertion.
    public var numberOfCredentials: Int?

    public init(ctapResponse: [UInt8]) throws(CTAPError) {
        let map = try CTAPClient.body(of: ctapResponse).parameters()
        credentialID = try map.required(1).parameters().required("id").bytes()
        authenticatorData = try map.required(2).bytes()
        signature = try map.required(3).bytes()
        let user = try map.optional(4)?.parameters()
        userHandle = try user?.required("id").bytes()
        userName = try user?.optional("name")?.text()
        userDisplayName = try user?.optional("displayName")?.text()
        numberOfCredentials = try map.optional(5)?.int()
    }
}
