import Hybrid
import NIOCore
import NIOPosix
import NIOSSL
import NIOWebSocket
import Synchronization
import WebSocketMessages

#if canImport(Glibc)
    import Glibc
#endif

/// What the frame handler passes up a tunnel's inbound stream (`NIOAsyncChannel`).
enum TunnelInbound: Sendable, Equatable {
    /// A whole binary message.
    case message([UInt8])
    /// Wakes the receive with this number: its deadline passed or its task was cancelled.
    case wake(UInt64)
}

/// A user inbound event asking the frame handler to wake a receive (``TunnelInbound/wake(_:)``).
struct TunnelWake: Sendable {
    var receive: UInt64
}

/// A user outbound event asking the frame handler to end the tunnel: a close frame with this code, then the
/// TCP connection is closed.
struct TunnelCloseRequest: Sendable {
    var code: WebSocketErrorCode
}

/// Messages passed up a tunnel's inbound stream and not yet taken by `receive`. The frame handler admits each
/// message on the event loop; the reader releases it when it takes it.
final class UnreadBudget: Sendable {
    let maximumMessages: Int
    let maximumBytes: Int
    private let held = Mutex((messages: 0, bytes: 0))

    init(maximumMessages: Int, maximumBytes: Int) {
        self.maximumMessages = maximumMessages
        self.maximumBytes = maximumBytes
    }

    /// Counts a message of `bytes` bytes, unless it would take the unread ones past a limit.
    func admit(_ bytes: Int) -> Bool {
        held.withLock { held in
            guard held.messages < maximumMessages, held.bytes + bytes <= maximumBytes else { return false }
            held.messages += 1
            held.bytes += bytes
            return true
        }
    }

    /// A message of `bytes` bytes was taken.
    func release(_ bytes: Int) {
        held.withLock { held in
            held.messages -= 1
            held.bytes -= bytes
        }
    }
}

/// The WebSocket side of a tunnel, between NIO's frame codec and the `NIOAsyncChannel`: whole binary messages go
/// up the inbound stream, pings are answered, a close frame is answered and ends the tunnel, and anything the
/// tunnel does not allow (text, masked frames, oversize messages, more unread messages than the budget) ends it
/// with the close code of its reason and the error in the inbound stream, behind the messages already passed up.
final class TunnelFrameHandler: ChannelDuplexHandler {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = TunnelInbound
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    /// How long a close frame may take to leave before the connection is closed anyway (a relay that does not read).
    static let closeGrace = TimeAmount.seconds(1)

    private var assembler: WebSocketMessageAssembler
    private let budget: UnreadBudget
    /// A close frame went out (or is going): nothing more is read, answered or sent.
    private var closing = false
    /// A pong is on its way and its write has not completed: a relay that sends pings and reads nothing would
    /// otherwise pile up one pong a ping in this process (issue 23, attack 11).
    private var pongInFlight = false
    /// The payload of the latest ping that came while a pong was on its way: answered once that one is out. RFC 6455
    /// §5.5.3 allows answering only the most recent of several pings.
    private var owedPong: ByteBuffer?

    init(maximumMessageBytes: Int, budget: UnreadBudget) {
        assembler = WebSocketMessageAssembler(sender: .server, maximumMessageBytes: maximumMessageBytes)
        self.budget = budget
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !closing else { return }
        let event: WebSocketMessageAssembler.Event
        do throws(WebSocketViolation) {
            event = try assembler.receive(Self.unwrapInboundIn(data))
        } catch {
            return fail(.protocolViolation(error), code: error.closeCode, context: context)
        }
        switch event {
        case .message(let buffer):
            guard budget.admit(buffer.readableBytes) else {
                return fail(.tooManyUnreadMessages, code: .policyViolation, context: context)
            }
            context.fireChannelRead(Self.wrapInboundOut(.message(Array(buffer: buffer))))
        case .ping(let payload):
            if pongInFlight {
                owedPong = payload
            } else {
                sendPong(payload, context: context)
            }
        case .fragment, .pong:
            break
        case .close(let code):
            // The relay or the peer ended the tunnel: answer, then close; the stream ends when the channel does. A
            // code of the wake channel's (`ListenerCloseCode`) is the relay's reason, which the reader gets as an
            // error; any other code ends the tunnel cleanly.
            if let code, ListenerCloseCode.describe(code) != nil {
                context.fireErrorCaught(TunnelError.closedByRelay(code: code))
            }
            sendClose(.normalClosure, context: context, promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard let wake = event as? TunnelWake else { return context.fireUserInboundEventTriggered(event) }
        context.fireChannelRead(Self.wrapInboundOut(.wake(wake.receive)))
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if let error = error as? NIOWebSocketError {
            let violation = WebSocketViolation(error)
            fail(.protocolViolation(violation), code: violation.closeCode, context: context)
        } else {
            fail(.connectionFailed(TunnelError.ConnectionFault(error)), code: .protocolError, context: context)
        }
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !closing else {
            promise?.fail(ChannelError.outputClosed)
            return
        }
        context.write(data, promise: promise)
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard let request = event as? TunnelCloseRequest else {
            return context.triggerUserOutboundEvent(event, promise: promise)
        }
        if closing {
            context.close(promise: promise)
        } else {
            sendClose(request.code, context: context, promise: promise)
        }
    }

    /// Ends the tunnel because of `error`: the reader gets it after the messages already passed up.
    private func fail(_ error: TunnelError, code: WebSocketErrorCode, context: ChannelHandlerContext) {
        guard !closing else {
            context.close(promise: nil)
            return
        }
        context.fireErrorCaught(error)
        sendClose(code, context: context, promise: nil)
    }

    /// Answers a ping; once the pong is out, the ping that came meanwhile, if any.
    private func sendPong(_ payload: ByteBuffer, context: ChannelHandlerContext) {
        pongInFlight = true
        let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: payload)
        context.writeAndFlush(Self.wrapOutboundOut(pong)).assumeIsolated().whenComplete { [self] result in
            pongInFlight = false
            guard case .success = result, !closing, let owed = owedPong else { return }
            owedPong = nil
            sendPong(owed, context: context)
        }
    }

    /// Writes a close frame and closes the connection once it is out, or after ``closeGrace``.
    private func sendClose(_ code: WebSocketErrorCode, context: ChannelHandlerContext, promise: EventLoopPromise<Void>?)
    {
        closing = true
        var data = context.channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: code)
        let frame = WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: data)
        let channel = context.channel
        channel.closeFuture.cascade(to: promise)
        context.writeAndFlush(Self.wrapOutboundOut(frame)).assumeIsolated().whenComplete { _ in
            channel.close(promise: nil)
        }
        context.eventLoop.scheduleTask(in: Self.closeGrace) { channel.close(promise: nil) }
    }
}

@available(*, unavailable)
extension TunnelFrameHandler: Sendable {}

extension TunnelError.ConnectionFault {
    /// The reason an error of the network stack names, in a person's terms: no library type names, errno numbers or
    /// TLS library dumps (those name the build machine's source paths; issue 24, item 5).
    init(_ error: any Error) {
        switch error {
        case let error as NIOConnectionError:
            if let first = error.connectionErrors.first {
                self = Self(first.error)
            } else if error.dnsAError != nil || error.dnsAAAAError != nil {
                self = .other("the name does not resolve")
            } else {
                self = .other("no connection could be made")
            }
        case let error as IOError:
            self = .system(Self.systemMessage(error.errnoCode))
        case ChannelError.connectTimeout:
            self = .timedOut
        case ChannelError.ioOnClosedChannel, ChannelError.alreadyClosed, ChannelError.eof, ChannelError.outputClosed:
            self = .closed
        case is NIOSSLError, is BoringSSLError:
            self = .tls("the relay's certificate is not trusted or not for this name, or it does not speak TLS")
        case is SocketAddressError:
            self = .other("the name does not resolve")
        default:
            self = .other("the network connection failed")
        }
    }

    /// What a failed system call on a socket means, without its errno number.
    static func systemMessage(_ code: Int32) -> String {
        switch code {
        case ECONNREFUSED: "the connection was refused: nothing listens there"
        case ECONNRESET: "the connection was reset"
        case EHOSTUNREACH, ENETUNREACH: "there is no route to it"
        case ETIMEDOUT: "the connection timed out"
        case EPIPE: "the connection closed"
        default: String(cString: strerror(code)).lowercased()
        }
    }
}
