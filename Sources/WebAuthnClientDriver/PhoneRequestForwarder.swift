import CTAP2
import WebAuthnClient

/// Forwards one CTAP2 request a security key received (command byte and CBOR, as the browser sent it) to a phone,
/// and returns the phone's answer (status byte and CBOR) as the phone sent it: nothing is decoded or encoded again,
/// so the browser's `clientDataHash`, extension inputs and every output (PRF, largeBlob, ones this package does not
/// know) pass byte for byte. The phone is any `ClientAuthenticator`: a QR code (`HybridPhoneAuthenticator`) or a
/// linked phone (`LinkedPhoneAuthenticator`). A makeCredential opens the session for registration (the QR code says
/// `mc`), anything else for sign-in. The session is closed on every path, and a cancelled task returns promptly
/// with the radio and tunnel closed.
public enum PhoneRequestForwarder {
    /// The largest answer a CTAPHID message carries (CTAP 2.1 §11.2.4).
    public static let maximumAnswerSize = 7609

    public static func forward(_ request: [UInt8], via phone: any ClientAuthenticator)
        async throws(AuthenticatorTransportError) -> [UInt8]
    {
        guard let command = request.first else { throw AuthenticatorTransportError("the request to forward is empty") }
        let session = try await phone.open(for: command == CTAPCommand.makeCredential.rawValue ? .create : .get)
        let answer: [UInt8]
        do {
            answer = try await session.send(request)
        } catch {
            await session.close()
            throw error
        }
        await session.close()
        guard !answer.isEmpty else { throw AuthenticatorTransportError("the phone's answer was empty") }
        guard answer.count <= maximumAnswerSize else {
            throw AuthenticatorTransportError(
                "the phone's answer is \(answer.count) bytes, more than a security key can return (\(maximumAnswerSize))"
            )
        }
        return answer
    }
}
