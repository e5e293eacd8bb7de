import CTAP2
import SecurityKeyDriver
import WebAuthnClient

/// A security key over CTAPHID (`hidraw:` or `udp:`), as a `ClientAuthenticator`. The engine decides about user
/// verification and asks for the PIN through its own interface; the key sends each request as it is. Cancelling a
/// request sends CTAPHID_CANCEL.
public struct SecurityKeyAuthenticator: ClientAuthenticator {
    public var kind: AuthenticatorKind { .securityKey }
    public var transports: [AuthenticatorTransport] { [.usb] }

    private let spec: SecurityKeySpec
    private let options: SecurityKeyOptions

    public init(_ spec: SecurityKeySpec, options: SecurityKeyOptions = SecurityKeyOptions()) {
        self.spec = spec
        self.options = options
    }

    /// A key lists nothing without a PIN or a touch.
    public func credentials(forRelyingParty relyingPartyID: String) async -> [CredentialMetadata]? { nil }

    public func open(for ceremony: ClientCeremony) async throws(AuthenticatorTransportError) -> any AuthenticatorSession
    {
        let key: SecurityKey
        do {
            key = try await SecurityKey.open(spec, options: options)
        } catch {
            throw AuthenticatorTransportError("\(error)")
        }
        do {
            return Session(key: key, info: try await key.getInfo())
        } catch {
            await key.close()
            throw AuthenticatorTransportError("\(error)")
        }
    }

    private struct Session: AuthenticatorSession {
        let key: SecurityKey
        let info: AuthenticatorInfo
        var name: String? { key.name }

        func send(_ message: [UInt8]) async throws(AuthenticatorTransportError) -> [UInt8] {
            let key = key
            let result: Result<[UInt8], SecurityKeyError> = await withTaskCancellationHandler {
                do throws(SecurityKeyError) {
                    return .success(try await key.send(ctapCommand: message))
                } catch {
                    return .failure(error)
                }
            } onCancel: {
                key.cancel()
            }
            switch result {
            case .success(let response): return response
            case .failure(let error): throw AuthenticatorTransportError("\(error)")
            }
        }

        func close() async { await key.close() }
    }
}
