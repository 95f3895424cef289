// Call sites for people (issue 28, item 5): the text report names a native frame by the last two
// components of its function's name, without template arguments, parameter lists or module, and
// keeps Python frames as they are; --json keeps the full frames (analysis/call_site_text.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "analysis/call_site_text.h"
#include "analysis/engine.h"

namespace cuprobe::analysis {
namespace {

TEST(CallSiteText, QualifiedNamesKeepTheirLastTwoComponents) {
  EXPECT_EQ(short_function("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::alloc_block("
                           "c10::cuda::CUDACachingAllocator::Native::AllocParams&, bool, "
                           "std::shared_ptr<c10::GatheredContext> const&, bool)"),
            "DeviceCachingAllocator::alloc_block");
  EXPECT_EQ(short_function("at::native::cudnn_convolution(at::Tensor const&, at::Tensor const&, c10::ArrayRef<long>)"),
            "native::cudnn_convolution");
  EXPECT_EQ(short_function("cudaMalloc"), "cudaMalloc");  // a C function
  EXPECT_EQ(short_function("cudnnBackendFinalize(void*)"), "cudnnBackendFinalize");
  EXPECT_EQ(short_function("Foo::bar(int) const &&"), "Foo::bar");
}

TEST(CallSiteText, TemplateArgumentsGoNestedOrNot) {
  EXPECT_EQ(short_function("void at::native::gpu_kernel_impl<at::native::BinaryFunctor<float, float, float, "
                           "at::native::MulFunctor<float> > >(at::TensorIteratorBase&, at::native::BinaryFunctor<"
                           "float, float, float, at::native::MulFunctor<float> > const&)"),
            "native::gpu_kernel_impl");  // the return type goes too
  EXPECT_EQ(short_function("std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>(__gnu_cxx::"
                           "__normal_iterator<int*, std::vector<int, std::allocator<int> > >, int const&)"),
            "vector::_M_realloc_insert");
  EXPECT_EQ(short_function("c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<"
                           "c10::CompileTimeFunctionPointer<at::Tensor (at::Tensor const&), &at::wrapper_add>, "
                           "at::Tensor, c10::guts::typelist::typelist<at::Tensor const&> >, at::Tensor (at::Tensor "
                           "const&)>::call(c10::OperatorKernel*, c10::DispatchKeySet, at::Tensor const&)"),
            "wrap_kernel_functor_unboxed_::call");
  // ">>" (LLVM's demangler) closes two, a comparison in parentheses none.
  EXPECT_EQ(short_function("ns::Box<ns::Pair<int, long>>::get()"), "Box::get");
  EXPECT_EQ(short_function("ns::Fixed<(4>2), int>::size() const"), "Fixed::size");
  EXPECT_EQ(short_function("std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > "
                           "c10::str<char const*>(char const* const&)"),
            "c10::str");
  EXPECT_EQ(short_function("ns::name[abi:cxx11](int)"), "ns::name");  // ABI tags go
}

TEST(CallSiteText, OperatorsAreNamesNotBrackets) {
  EXPECT_EQ(short_function("std::function<void (int)>::operator()(int) const"), "function::operator()");
  EXPECT_EQ(short_function("std::less<int>::operator()(int const&, int const&) const"), "less::operator()");
  EXPECT_EQ(short_function("bool ns::operator< <ns::Foo>(ns::Foo const&, ns::Foo const&)"), "ns::operator<");
  EXPECT_EQ(short_function("std::basic_ostream<char, std::char_traits<char> >& std::operator<< <std::char_traits<char> "
                           ">(std::basic_ostream<char, std::char_traits<char> >&, char const*)"),
            "std::operator<<");
  EXPECT_EQ(short_function("std::map<int, int, std::less<int>>::operator[](int const&)"), "map::operator[]");
  EXPECT_EQ(short_function("ns::Ptr<int>::operator->() const"), "Ptr::operator->");
  EXPECT_EQ(short_function("ns::Flag::operator bool() const"), "Flag::operator bool");
  EXPECT_EQ(short_function("operator new[](unsigned long)"), "operator new[]");
  EXPECT_EQ(short_function("operator delete(void*, unsigned long)"), "operator delete");
  EXPECT_EQ(short_function("ns::Big::operator<=>(ns::Big const&) const"), "Big::operator<=>");
}

TEST(CallSiteText, LambdasAndAnonymousNamespaces) {
  // A lambda's call operator is the lambda; the function it is defined in names it.
  EXPECT_EQ(short_function("at::native::(anonymous namespace)::mul_kernel(at::TensorIteratorBase&)::{lambda()#1}::"
                           "operator()() const"),
            "mul_kernel::{lambda#1}");
  EXPECT_EQ(short_function("ns::f(int)::{lambda(int, float)#3}::operator()(int, float) const"), "f::{lambda#3}");
  EXPECT_EQ(short_function("ns::Foo::run() const::{lambda(std::vector<int, std::allocator<int> > const&)#2}::"
                           "operator()(std::vector<int, std::allocator<int> > const&) const"),
            "run::{lambda#2}");
  EXPECT_EQ(short_function("(anonymous namespace)::helper(int)"), "helper");
  EXPECT_EQ(short_function("at::(anonymous namespace)::wrapper_CUDA_empty(c10::ArrayRef<c10::SymInt>)"),
            "at::wrapper_CUDA_empty");
  EXPECT_EQ(short_function("ns::{unnamed type#1}::get()"), "{unnamed type#1}::get");
}

TEST(CallSiteText, ClonesThunksAndNamesCutShort) {
  EXPECT_EQ(short_function("ns::Foo::bar(int) [clone .constprop.0] [clone .cold]"), "Foo::bar");
  EXPECT_EQ(short_function("non-virtual thunk to ns::Foo::bar()"), "Foo::bar");
  // Symbolizer::text cuts a name at 160 characters: in the parameters nothing is lost, in the
  // name the report says so.
  EXPECT_EQ(short_function("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, "
                           "unsigned long, CUstream_st*) [clone .isra.0]"),
            "DeviceCachingAllocator::malloc");
  EXPECT_EQ(short_function("at::native::alloc(c10::ArrayRef<long>, std::optional<c10::Sc..."), "native::alloc");
  EXPECT_EQ(short_function("c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<c10::"
                           "CompileTimeFunctionPointer<at::Tensor (c10::ArrayRef<long>, std::optional<c10::Sc..."),
            "impl::wrap_kernel_functor_unboxed_...");
  EXPECT_EQ(short_function("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAll..."),
            "Native::DeviceCachingAll...");
  // Nothing readable: given back as it came.
  EXPECT_EQ(short_function(""), "");
  EXPECT_EQ(short_function("<>"), "<>");
  EXPECT_EQ(short_function("((("), "(((");
}

TEST(CallSiteText, Frames) {
  EXPECT_EQ(short_frame("c10::Foo::bar(int) at alloc.cpp:42 (libc10_cuda.so)"), "Foo::bar at alloc.cpp:42");
  EXPECT_EQ(short_frame("at::native::empty_cuda(c10::ArrayRef<long>) (libtorch_cuda.so)"), "native::empty_cuda");
  // A long location is left out; the function says enough.
  EXPECT_EQ(short_frame("ns::f() at generated_kernels_for_every_dtype_and_layout_0123.cu:1234 (libx.so)"), "ns::f");
  EXPECT_EQ(short_frame("inner(int) at a.h:3 inlined into ns::Outer::run() at b.cc:12 (libx.so)"),
            "inner at a.h:3 inlined into Outer::run at b.cc:12");
  EXPECT_EQ(short_frame("inner(int) at a.h:3 inlined into ? (libx.so)"), "inner at a.h:3 inlined into ?");
  // No symbol: the module is all there is.
  EXPECT_EQ(short_frame("0x1a2b (libcudnn_engines_precompiled.so.9)"), "0x1a2b (libcudnn_engines_precompiled.so.9)");
  EXPECT_EQ(short_frame("0x7f00dead (?)"), "0x7f00dead (?)");
  // Python frames as they are.
  EXPECT_EQ(short_frame("/home/me/train.py:12 in step"), "/home/me/train.py:12 in step");
  EXPECT_EQ(short_frame("torch/nn/functional.py:2846 in batch_norm"), "torch/nn/functional.py:2846 in batch_norm");
  EXPECT_EQ(short_frame("model.py:7 in <lambda>"), "model.py:7 in <lambda>");
}

TEST(CallSiteText, ComposedSites) {
  EXPECT_EQ(short_call_site("88 late searches from: /home/me/train.py:12 in step < at::native::cudnn_convolution("
                            "at::Tensor const&) (libtorch_cuda.so) < 0x12 (libcudnn.so.9)"),
            "88 late searches from: /home/me/train.py:12 in step < native::cudnn_convolution < 0x12 (libcudnn.so.9)");
  EXPECT_EQ(
      short_call_site("the failed request: train.py:3 in f < c10::cuda::CUDACachingAllocator::Native::"
                      "DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*) (libc10_cuda.so)"),
      "the failed request: train.py:3 in f < DeviceCachingAllocator::malloc");
  // No words before the frames: nothing taken for a prefix.
  EXPECT_EQ(short_call_site("train.py:3 in f < ns::a::b(int) (libx.so)"), "train.py:3 in f < a::b");
  EXPECT_EQ(short_call_site(""), "");
}

// The text report prints short frames; the JSON keeps the full ones.
TEST(CallSiteText, ReportShortensJsonDoesNot) {
  Report r;
  r.summary = {{"processes", 1},
               {"hosts", {"gpu0"}},
               {"ranks", nlohmann::json::array()},
               {"events", 10},
               {"duration_s", 1.0},
               {"devices", nlohmann::json::array()},
               {"calls_by_api", nlohmann::json::object()},
               {"per_process", nlohmann::json::array()},
               {"faults", nlohmann::json::array()}};
  Finding f;
  f.rule = "allocation-churn";
  f.title = "t";
  f.message = "m";
  const std::string full =
      "3 steady-state allocations from: /home/me/train.py:12 in step < c10::cuda::"
      "CUDACachingAllocator::Native::DeviceCachingAllocator::alloc_block(c10::cuda::"
      "CUDACachingAllocator::Native::AllocParams&, bool) (libc10_cuda.so)";
  f.call_sites = {full};
  r.findings.push_back(f);
  char* buf = nullptr;
  size_t len = 0;
  FILE* out = open_memstream(&buf, &len);
  print_report(r, false, out);
  std::fclose(out);
  std::string text(buf, len);
  std::free(buf);
  EXPECT_NE(text.find("    at 3 steady-state allocations from: /home/me/train.py:12 in step < "
                      "DeviceCachingAllocator::alloc_block\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("AllocParams"), std::string::npos) << text;
  EXPECT_EQ(findings_json(r.findings)[0]["call_sites"][0], full);
}

}  // namespace
}  // namespace cuprobe::analysis
