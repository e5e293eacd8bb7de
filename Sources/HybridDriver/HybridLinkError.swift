import Hybrid
import HybridIO
import Proximity

/// Why a hybrid link over real (or injected) tunnels and radios ended early. Each case reads as one plain sentence.
public enum HybridLinkError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The Bluetooth radio (BlueZ or simulated) could not be used.
    case radio(ProximityError)
    /// The relay could not be reached, refused the tunnel, or the tunnel failed.
    case tunnel(TunnelError)
    /// The hybrid protocol failed or timed out: a bad handshake, a message that did not decrypt, no advert or no
    /// client in time.
    case session(HybridSessionError)
    /// The QR code could not be made or read.
    case qrCode(QRCodeError)
    /// A linked session could not be made from the stored link.
    case linkedSession(LinkedSessionError)
    /// The task waiting on the link was cancelled (a browser's CTAPHID_CANCEL, a timeout): the radio, timer and
    /// tunnel were closed.
    case cancelled

    public var description: String {
        switch self {
        case .radio(let error): error.description
        case .tunnel(let error): error.description
        case .session(let error): error.description
        case .qrCode(let error): "QR code: \(error)"
        case .linkedSession(let error): error.description
        case .cancelled: "cancelled"
        }
    }
}
