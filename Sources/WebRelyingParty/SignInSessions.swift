import Basics
import Crypto
import Foundation

/// Who is signed in, by browser: a session starts when a registration or a sign-in verifies, and the browser sends
/// its cookie back. Registering another passkey for a user name that already has one takes a session of that user
/// (issue 23, attack 2: a page could add its own passkey to `alice` by asking for her name).
///
/// The cookie holds 32 random bytes; the server keeps only their SHA-256, so the table gives no session away, and
/// looking a token up compares digests, not the secret. Sessions last ``lifetime``; past ``maximumCount`` the one
/// nearest its end goes.
public struct SignInSessions: Sendable {
    /// The cookie's name.
    public static let cookieName = "passkey-rp-session"

    public var lifetime = Duration.seconds(12 * 3600)
    public var maximumCount = 1024

    private var sessions: [[UInt8]: (userName: String, expires: ContinuousClock.Instant)] = [:]

    public init() {}

    /// Sessions kept now (expired ones included until they are looked up or pushed out).
    public var count: Int { sessions.count }

    /// Starts a session of `userName` under `token` (32 fresh random bytes) and returns the `Set-Cookie` value.
    public mutating func start(userName: String, token: [UInt8], now: ContinuousClock.Instant) -> String {
        sessions = sessions.filter { $0.value.expires > now }
        if sessions.count >= maximumCount, let nearest = sessions.min(by: { $0.value.expires < $1.value.expires }) {
            sessions[nearest.key] = nil
        }
        sessions[Self.digest(token)] = (userName, now + lifetime)
        let seconds = lifetime.components.seconds
        return
            "\(Self.cookieName)=\(token.base64URLEncodedString); Path=/; Max-Age=\(seconds); HttpOnly; SameSite=Strict"
    }

    /// The user signed in by the session a `Cookie` header names; nil when it names none, or an unknown or expired
    /// one.
    public func userName(cookieHeader: String?, now: ContinuousClock.Instant) -> String? {
        guard let cookieHeader else { return nil }
        for pair in cookieHeader.split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == Self.cookieName,
                let token = [UInt8](base64URLEncoded: parts[1].trimmingCharacters(in: .whitespaces)),
                token.count == 32,
                let session = sessions[Self.digest(token)], session.expires > now
            else { continue }
            return session.userName
        }
        return nil
    }

    private static func digest(_ token: [UInt8]) -> [UInt8] { Array(SHA256.hash(data: token)) }
}
