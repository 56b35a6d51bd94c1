#pragma once
/// \file
/// The callable an event runs: a move-only `void()` function object kept inline when it fits in
/// 40 bytes (every event of the simulator does: a `this` and an index or two), on the heap
/// otherwise.
///
/// std::function keeps only 16 bytes inline (a lambda capturing three words allocated on every
/// event) and moves or destroys even those through an indirect call to its manager. An event is
/// scheduled, moved and run millions of times a second; here a callable that is trivially
/// copyable and destructible, as a lambda capturing pointers and numbers is, moves by copying
/// its bytes and is destroyed by doing nothing.

#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace clustersim::sim {

class Callback {
public:
    static constexpr std::size_t kInlineBytes = 40;

    Callback() = default;
    Callback(std::nullptr_t) {} // NOLINT: implicit, as std::function's
    /// Wraps any callable `f()` (a lambda, a function pointer, a std::function).
    template <class F, class D = std::decay_t<F>,
              class = std::enable_if_t<!std::is_same_v<D, Callback> && std::is_invocable_v<D&>>>
    Callback(F&& f) { // NOLINT: implicit, so that a lambda converts as into std::function
        emplace<D>(std::forward<F>(f));
    }
    Callback(Callback&& other) noexcept { take(other); }
    Callback& operator=(Callback&& other) noexcept {
        if (this != &other) {
            reset();
            take(other);
        }
        return *this;
    }
    Callback& operator=(std::nullptr_t) noexcept {
        reset();
        return *this;
    }
    Callback(const Callback&) = delete;
    Callback& operator=(const Callback&) = delete;
    ~Callback() { reset(); }

    explicit operator bool() const noexcept { return invoke_ != nullptr; }
    /// Runs the callable; it must not be empty.
    void operator()() { invoke_(storage_); }

private:
    enum class Op { move, destroy };
    using Invoke = void (*)(void*);
    /// Moves the object at `from` into `self` (and destroys it at `from`), or destroys `self`.
    using Manage = void (*)(Op, void* self, void* from);

    template <class D>
    static constexpr bool kFitsInline = (sizeof(D) <= kInlineBytes) &&
                                        (alignof(D) <= alignof(void*)) &&
                                        (std::is_nothrow_move_constructible_v<D>);
    /// Moved by copying the bytes, destroyed by forgetting them: no manager at all.
    template <class D>
    static constexpr bool kPlainBytes =
        std::conjunction_v<std::is_trivially_copyable<D>, std::is_trivially_destructible<D>>;

    template <class D, class F>
    void emplace(F&& f) {
        if constexpr (kFitsInline<D>) {
            ::new (static_cast<void*>(storage_)) D(std::forward<F>(f));
            invoke_ = [](void* p) { (*std::launder(static_cast<D*>(p)))(); };
            if constexpr (!kPlainBytes<D>)
                manage_ = &manage_inline<D>;
        } else {
            // The object on the heap, its pointer inline.
            ::new (static_cast<void*>(storage_)) D*(new D(std::forward<F>(f)));
            invoke_ = [](void* p) { (**std::launder(static_cast<D**>(p)))(); };
            manage_ = &manage_heap<D>;
        }
    }

    template <class D>
    static void manage_inline(Op op, void* self, void* from) {
        if (op == Op::move) {
            D* source = std::launder(static_cast<D*>(from));
            ::new (self) D(std::move(*source));
            source->~D();
        } else {
            std::launder(static_cast<D*>(self))->~D();
        }
    }
    template <class D>
    static void manage_heap(Op op, void* self, void* from) {
        if (op == Op::move)
            std::memcpy(self, from, sizeof(D*));
        else
            delete *std::launder(static_cast<D**>(self));
    }

    void take(Callback& other) noexcept {
        invoke_ = other.invoke_;
        manage_ = other.manage_;
        if (manage_ != nullptr)
            manage_(Op::move, storage_, other.storage_);
        else
            std::memcpy(storage_, other.storage_, kInlineBytes);
        other.invoke_ = nullptr;
        other.manage_ = nullptr;
    }
    void reset() noexcept {
        if (manage_ != nullptr)
            manage_(Op::destroy, storage_, nullptr);
        invoke_ = nullptr;
        manage_ = nullptr;
    }

    alignas(void*) unsigned char storage_[kInlineBytes];
    Invoke invoke_ = nullptr;
    Manage manage_ = nullptr;
};

} // namespace clustersim::sim
